set -x PATH $HOME/bin $PATH
# BEGIN ZYLOS MANAGED hooks hash=74bb80a69525
set -x Z 1
# END ZYLOS MANAGED hooks
