"""The ``vllm-cpp`` command line (also ``python -m vllm_cpp``): ``serve``,
``generate``, ``chat`` and ``bench``, with vLLM's engine flag names."""
