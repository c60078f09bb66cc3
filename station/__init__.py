"""station: self-host an open LLM at full throughput on one NVIDIA GPU box."""
