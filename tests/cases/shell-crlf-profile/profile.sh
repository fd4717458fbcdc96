export A=1
alias l=ls
