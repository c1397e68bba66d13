/**
 * What a backend of a VMM is built from. Whether this host's KVM runs guests ({@link
 * io.vivarium.kit.vmm.HostKvm}). For a VMM that serves an HTTP API on a Unix socket and reaches its
 * guest over vsock (Firecracker, Cloud Hypervisor): its API client ({@link
 * io.vivarium.kit.vmm.VmmApiClient}, refusals as {@link io.vivarium.kit.vmm.VmmApiException}), and a
 * guest's whole life but what is particular to the VMM, which a {@link io.vivarium.kit.vmm.VmmDriver}
 * says: {@link io.vivarium.kit.vmm.VmmLauncher} (start, adopt, end), {@link
 * io.vivarium.kit.vmm.VmmInstance}, {@link io.vivarium.kit.vmm.VmmHostProbe} (availability and
 * details), {@link io.vivarium.kit.vmm.VmmGuestImage}, {@link io.vivarium.kit.vmm.VmmProcess}; and,
 * for a VMM that saves and loads a guest's state ({@link io.vivarium.kit.vmm.VmmSnapshots}, since
 * 1.1), its checkpoints ({@link io.vivarium.kit.vmm.VmmCheckpoints}).
 */
@Export
@Version("1.1.0")
package io.vivarium.kit.vmm;

import org.osgi.annotation.bundle.Export;
import org.osgi.annotation.versioning.Version;
