"""The XDP core: xdp_buff, the adjust helpers, xdp_frame conversion, memory types, actions."""
