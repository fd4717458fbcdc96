export A=1
// BEGIN ZYLOS MANAGED hooks
alias ll='ls -l'
