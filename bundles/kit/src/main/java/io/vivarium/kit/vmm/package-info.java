/**
 * What a backend of a VMM is built from: whether this host's KVM runs guests ({@link
 * io.vivarium.kit.vmm.HostKvm}), and for one that speaks its VMM's HTTP API over its Unix socket (Firecracker's
 * {@code --api-sock}, Cloud Hypervisor's {@code --api-socket}): {@link
 * io.vivarium.kit.vmm.VmmApiClient}, one request at a time with JSON bodies, and {@link
 * io.vivarium.kit.vmm.VmmApiException}, a refusal with the VMM's status and body.
 */
@Export
@Version("1.0.0")
package io.vivarium.kit.vmm;

import org.osgi.annotation.bundle.Export;
import org.osgi.annotation.versioning.Version;
