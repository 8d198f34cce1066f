"""AMD ROCm: what exists of it today is the question whether a ROCm device is here
(`tilelang.rocm.target.check_hip_availability`); there is no HIP backend yet."""
