"""The mlx5 (ConnectX) receive path: CQE wire formats, a device model, and the
mlx5e driver's completion-queue reader (SPEC: MLX5-*).

``cqe`` holds the byte layouts of ``include/linux/mlx5/device.h``; ``device`` turns
frames into the completion-ring image a ConnectX would write; ``cq`` reads that ring
the way ``drivers/net/ethernet/mellanox/mlx5/core/en_rx.c`` does, decompressing
compressed CQEs into the 64-byte CQEs the RX handlers see.
"""
