# ~/.bashrc: executed by bash for interactive shells.
case $- in *i*) ;; *) return;; esac

HISTSIZE=5000
alias ll='ls -alF'
# BEGIN ZYLOS MANAGED path hash=9ee92b8310bd
export PATH="$HOME/.zylos/bin:$PATH"
# END ZYLOS MANAGED path
# BEGIN ZYLOS MANAGED hooks hash=95749ccaf603
eval "$(zylos hook bash)"
# END ZYLOS MANAGED hooks
# BEGIN ZYLOS MANAGED prompt hash=96e6dce3f12f
export ZYLOS_PROMPT=long
export ZYLOS_COLOR=auto
export ZYLOS_PAGER=less
# END ZYLOS MANAGED prompt
export EDITOR=vim
