# ~/.profile
export PATH="$HOME/bin:$PATH"
alias ll='ls -alF'
