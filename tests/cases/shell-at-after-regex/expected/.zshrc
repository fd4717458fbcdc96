export ZSH=$HOME/.oh-my-zsh
plugins=(git)
source $ZSH/oh-my-zsh.sh
# BEGIN ZYLOS MANAGED hooks hash=13a3c61eb6b5
eval "$(zylos init zsh)"
# END ZYLOS MANAGED hooks
alias g=git
