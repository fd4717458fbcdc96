# ~/.profile
export PATH="$HOME/bin:$PATH"
alias ll='ls -alF'
export USER_LINE=1
