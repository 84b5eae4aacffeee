# Devices of the generic-fuzz QEMU (scripts/build-qemu-fuzz.sh): the q35
# machine and the PEACH2 card, nothing else (configure --without-default-devices).
CONFIG_Q35=y
CONFIG_PEACH2=y
