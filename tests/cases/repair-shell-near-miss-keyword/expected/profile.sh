export A=1
# BEGIN ZYLOS MANAGED hooks hash=51a8050bc66a
export ZYLOS=1
# END ZYLOS MANAGED hooks
alias ll='ls -l'
