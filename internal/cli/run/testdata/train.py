import torch.distributed as dist
dist.init_process_group("gloo")
print("rank", dist.get_rank(), "of", dist.get_world_size())
