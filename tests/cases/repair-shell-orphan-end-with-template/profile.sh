export A=1
export ZYLOS=1
# END ZYLOS MANAGED hooks
alias ll='ls -l'
