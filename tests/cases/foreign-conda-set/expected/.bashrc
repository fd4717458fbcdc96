# ~/.bashrc
HISTSIZE=1000
# >>> conda initialize >>>
eval "$(/opt/conda/bin/conda shell.bash hook)"
# <<< conda initialize <<<
alias ll='ls -l'
# BEGIN ANSIBLE MANAGED BLOCK
export JAVA_HOME=/usr/lib/jvm/default
export EDITOR=vim
# END ANSIBLE MANAGED BLOCK
# BEGIN ZYLOS MANAGED hooks hash=830cf4028527
export EDITOR=nano
# END ZYLOS MANAGED hooks
export MINE=1
