HISTSIZE=1000
# BEGIN ZYLOS MANAGED path
export PATH="$HOME/.zylos/bin:$HOME/.zylos/tools:$PATH"
# END ZYLOS MANAGED path
# BEGIN ZYLOS MANAGED completion hash=c535d623f353
. "$HOME/.zylos/completion.bash"
# END ZYLOS MANAGED completion
alias ll='ls -l'
# BEGIN ZYLOS MANAGED old
export ZYLOS_OLD=1
# END ZYLOS MANAGED old
# BEGIN ANSIBLE MANAGED BLOCK
export ANS=1
# END ANSIBLE MANAGED BLOCK
