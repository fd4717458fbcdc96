# ~/.bashrc
HISTSIZE=1000
# >>> conda initialize >>>
# !! Contents within this block are managed by 'conda init' !!
__conda_setup="$('/opt/conda/bin/conda' 'shell.bash' 'hook' 2> /dev/null)"
if [ $? -eq 0 ]; then
    eval "$__conda_setup"
else
    export PATH="/opt/conda/bin:$PATH"
fi
unset __conda_setup
# <<< conda initialize <<<
alias ll='ls -l'
# BEGIN ANSIBLE MANAGED BLOCK
export JAVA_HOME=/usr/lib/jvm/java-21
# END ANSIBLE MANAGED BLOCK
# BEGIN ZYLOS MANAGED hooks hash=830cf4028527
export EDITOR=nano
# END ZYLOS MANAGED hooks
export MINE=1
