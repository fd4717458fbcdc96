demarcate set ~/.bashrc --owner ZYLOS --name hooks --content 'export PATH="$HOME/.zylos/bin:$PATH"'
demarcate list ~/.bashrc
demarcate remove ~/.bashrc --owner ZYLOS --name hooks
