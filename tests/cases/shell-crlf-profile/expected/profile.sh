export A=1
alias l=ls
# BEGIN ZYLOS MANAGED hooks hash=70f3e1bfe610
export B=2
export C=3
# END ZYLOS MANAGED hooks
