# BEGIN ZYLOS MANAGED path
export PATH="$HOME/.zylos/bin:$HOME/.zylos/tools:$PATH"
# END ZYLOS MANAGED path
# BEGIN ZYLOS MANAGED completion
. "$HOME/.zylos/completion.bash"
# END ZYLOS MANAGED completion
