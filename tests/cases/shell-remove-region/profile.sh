# ~/.profile
export PATH="$HOME/bin:$PATH"
alias ll='ls -alF'
# BEGIN ZYLOS MANAGED hooks hash=8cb53e8a30d5
export A=1
# END ZYLOS MANAGED hooks
export USER_LINE=1
