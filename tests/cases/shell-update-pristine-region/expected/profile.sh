# ~/.profile
export PATH="$HOME/bin:$PATH"
alias ll='ls -alF'
# BEGIN ZYLOS MANAGED hooks hash=4ed2bef9f1fd -- do not edit
export A=2
export B=3
# END ZYLOS MANAGED hooks
export USER_LINE=1
