export A=1
# BEGIN ZYLOS MANAGED hooks
export ZYLOS=1
alias ll='ls -l'
