# ~/.profile
export PATH="$HOME/bin:$PATH"
alias ll='ls -alF'
# BEGIN ZYLOS MANAGED hooks hash=8cb53e8a30d5
export A=1
export USER_LINE=1
