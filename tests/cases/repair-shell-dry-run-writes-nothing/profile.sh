export A=1
# BEGIN ZYLOS MANAGED hooks hash=51a8050bc66a
export ZYLOS=1
