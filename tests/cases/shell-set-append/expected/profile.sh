# ~/.profile
export PATH="$HOME/bin:$PATH"
alias ll='ls -alF'
# BEGIN ZYLOS MANAGED hooks hash=9ee92b8310bd
export PATH="$HOME/.zylos/bin:$PATH"
# END ZYLOS MANAGED hooks
