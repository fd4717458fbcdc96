# zylos 2.x shell profile template: `path` moves, `hooks` is gone, `completion` is new,
# and `prompt` gains a line.
# BEGIN ZYLOS MANAGED path
export PATH="$HOME/.zylos/2/bin:$PATH"
# END ZYLOS MANAGED path
# BEGIN ZYLOS MANAGED prompt
export ZYLOS_PROMPT=short
export ZYLOS_COLOR=auto
export ZYLOS_PAGER=less
export ZYLOS_THEME=dark
# END ZYLOS MANAGED prompt
# BEGIN ZYLOS MANAGED completion
[ -f "$HOME/.zylos/completion.bash" ] && . "$HOME/.zylos/completion.bash"
# END ZYLOS MANAGED completion
