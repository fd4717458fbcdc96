export A=1
# BEGIN Z MANAGD a
export B=2
