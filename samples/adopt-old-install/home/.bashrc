# ~/.bashrc
alias ll='ls -l'

# zylos-managed: bin PATH
export PATH="/home/me/zylos/bin:$PATH"
export EDITOR=vim
