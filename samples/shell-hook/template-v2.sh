# Regions zylos 2.0 manages in a shell profile. Text outside regions is ignored by sync.

# BEGIN ZYLOS MANAGED path
export PATH="$HOME/.zylos/bin:$HOME/.zylos/tools/bin:$PATH"
export ZYLOS_HOME="$HOME/.zylos"
# END ZYLOS MANAGED path

# BEGIN ZYLOS MANAGED completion
if [ -n "$BASH_VERSION" ] && [ -f "$HOME/.zylos/completion.bash" ]; then
    . "$HOME/.zylos/completion.bash"
fi
# END ZYLOS MANAGED completion
