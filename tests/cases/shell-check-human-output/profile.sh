export A=1
# BEGIN ZYLOS MANAGED hooks
export B=2
