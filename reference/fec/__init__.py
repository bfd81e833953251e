"""The Freescale FEC driver model (SPEC part ``fec.md``, rule prefix FEC-).

Kernel: ``drivers/net/ethernet/freescale/fec.h`` and ``fec_main.c``, Kingxukai/linux
v6.17-rc3.  Modules: ``bufdesc`` (descriptor layouts and bits, FEC-BD-*), ``device``
(the MAC, device-model assumptions, FEC-DEV-*), ``state`` (``fec_enet_private``),
``rx`` (open, the RX ring walk, skb, restart, close, FEC-RX-*), ``xdp``
(verdicts and XDP_TX, FEC-XDP-*), ``tx`` (XDP transmit and completion, FEC-TX-*),
``counters`` (FEC-STATS-*).
"""
