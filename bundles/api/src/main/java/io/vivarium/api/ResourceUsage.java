package io.vivarium.api;

/**
 * What one instance uses on its host right now, for operators and metrics. Each figure is null
 * when the backend cannot measure it. Since 1.3.
 *
 * @param residentMemoryBytes resident memory of all its processes (a VM: of its VMM process)
 * @param cpuSeconds CPU time (user + system) its processes have used since it started
 * @param diskBytes bytes its writable disk or workspace occupies on the host
 */
public record ResourceUsage(Long residentMemoryBytes, Double cpuSeconds, Long diskBytes) {
}
