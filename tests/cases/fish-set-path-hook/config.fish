set -x PATH $HOME/bin $PATH
