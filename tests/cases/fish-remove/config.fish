set -gx EDITOR vim
# BEGIN ZYLOS MANAGED path
fish_add_path $HOME/.zylos/bin
# END ZYLOS MANAGED path
alias ll "ls -l"
