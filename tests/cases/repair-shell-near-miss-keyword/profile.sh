export A=1
# BEGN ZYLOS MANGED hooks hash=51a8050bc66a
export ZYLOS=1
# END ZYLOS MANAGED hooks
alias ll='ls -l'
