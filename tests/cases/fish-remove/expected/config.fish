set -gx EDITOR vim
alias ll "ls -l"
