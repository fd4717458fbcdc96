fish_add_path $HOME/.zylos/bin
set -gx ZYLOS_HOME $HOME/.zylos
