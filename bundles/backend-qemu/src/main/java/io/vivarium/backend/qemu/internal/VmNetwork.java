package io.vivarium.backend.qemu.internal;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import io.vivarium.api.NetworkPolicy;
import io.vivarium.api.spi.InstanceSpec;
import io.vivarium.common.net.SandboxNetworks;
import io.vivarium.common.net.SavedPolicy;
import io.vivarium.kit.guest.Deadline;
import io.vivarium.kit.guest.GuestAgentException;
import io.vivarium.kit.guest.GuestExecResult;

/**
 * A VM's {@code egress} network (docs/network.md, "How QEMU does it"): a persistent tap of the host
 * ({@link SandboxNetworks#attachTap}), named as procbox's and gVisor's host ends are, so that the same
 * nftables chain filters what the guest sends; a virtio-net NIC on it; the guest's {@code eth0} given
 * the second address of the sandbox's /30 through the agent once the guest runs ({@link #configure}):
 * after a boot, and after every start of saved RAM in a new QEMU (a fork's child, whose RAM holds its
 * parent's address; a cold VM woken). The tap outlives QEMU (a stop, a cold spell) until the VM is
 * deleted; the policy and resolver are in the VM's record, so that a tap a host's reboot took is made
 * again. A VM of mode {@code none} has no NIC at all ({@code -nic none}).
 *
 * @param sandboxId the sandbox whose tap it is
 * @param policy its {@code egress} policy
 * @param resolver the resolver its {@code /etc/resolv.conf} names, or null for none
 */
record VmNetwork(String sandboxId, NetworkPolicy policy, String resolver) {

    /** Every guest's MAC: each VM is alone on its tap, so they need not differ, and a fork's child keeps its parent's. */
    static final String MAC = "52:54:00:76:73:62";
    private static final String NETDEV = "net0";
    /** The prefix of its record's keys: {@code network_allow}, {@code network_deny}, {@code network_resolver}. */
    private static final String DATA = "network_";
    private static final String DATA_SANDBOX = "network_sandbox";
    private static final Duration TIMEOUT = Duration.ofSeconds(10);
    /**
     * $1 the address/prefix, $2 the gateway, $3 the resolver or nothing. The driver is one of the
     * guest's late modules (loaded as its agent starts), so {@code eth0} may take a moment.
     */
    private static final String SCRIPT = "i=0; while [ ! -e /sys/class/net/eth0 ]; do i=$((i + 1));"
            + " if [ $i -gt 250 ]; then echo 'the guest has no eth0: its image lacks the virtio_net driver (build it"
            + " again with guest-agent/image/build-image.sh)' >&2; exit 3; fi; usleep 20000; done;"
            + " ip addr flush dev eth0 && ip addr add \"$1\" dev eth0 && ip link set eth0 up"
            + " && ip route replace default via \"$2\" || exit 4;"
            + " mkdir -p /run/vivarium && if [ -n \"$3\" ]; then echo \"nameserver $3\"; else echo '# no resolver configured"
            + " (network_resolver)'; fi > /run/vivarium/resolv.conf || exit 5;"
            // a template's root is read-only: its resolv.conf is covered instead
            + " cat /run/vivarium/resolv.conf 2>/dev/null > /etc/resolv.conf || { [ -e /etc/resolv.conf ]"
            + " && mount --bind /run/vivarium/resolv.conf /etc/resolv.conf; } || echo 'no /etc/resolv.conf to name the"
            + " resolver in' >&2; exit 0";

    /** The network of a VM of {@code spec}: null for mode {@code none}. */
    static VmNetwork of(InstanceSpec spec) {
        return spec.network().egress() ? new VmNetwork(spec.id(), spec.network(), spec.resolver()) : null;
    }

    /** QEMU's options for the NIC on the tap (no vhost: the host has no vhost-net). */
    List<String> qemuArgs() {
        return List.of("-netdev", "tap,id=" + NETDEV + ",ifname=" + SandboxNetworks.interfaceOf(sandboxId)
                        + ",script=no,downscript=no,vhost=off",
                "-device", "virtio-net-pci,netdev=" + NETDEV + ",mac=" + MAC);
    }

    /** Makes the host's end, the VM's tap, unless the host has it. */
    void makeHostSide(SandboxNetworks networks) throws IOException {
        if (SandboxNetworks.link(sandboxId).isEmpty()) {
            networks.attachTap(sandboxId, policy, resolver);
        }
    }

    /** Gives the running guest of {@code vm} its address, route and resolver ({@link #SCRIPT}), as root. */
    void configure(QemuInstance vm) throws IOException {
        SandboxNetworks.Link link = SandboxNetworks.link(sandboxId)
                .orElseThrow(() -> new IOException("the host has no tap " + SandboxNetworks.interfaceOf(sandboxId)));
        GuestExecResult r;
        try {
            r = vm.agent().exec(VmRoot.script(vm.record().root(), SCRIPT, "sh", link.address(), link.gateway(),
                    resolver == null ? "" : resolver).withTimeout(TIMEOUT), Deadline.after(TIMEOUT.plusSeconds(5)));
        } catch (GuestAgentException e) {
            throw new IOException("configuring the guest's network failed: " + e.getMessage(), e);
        }
        if (r.exitCode() == null || r.exitCode() != 0) {
            throw new IOException("configuring the guest's network failed (exit " + r.exitCode() + "): "
                    + new String(r.stderr(), StandardCharsets.UTF_8).strip());
        }
    }

    void putData(Map<String, String> data) {
        data.put(DATA_SANDBOX, sandboxId);
        data.putAll(new SavedPolicy(policy, resolver).toText(DATA));
    }

    /** Reads what {@link #putData} wrote: null for a VM without a network (or recorded before VMs had one). */
    static VmNetwork fromData(Map<String, String> data) {
        String id = data.get(DATA_SANDBOX);
        if (id == null) {
            return null;
        }
        SavedPolicy saved = SavedPolicy.fromText(data, DATA).orElse(new SavedPolicy(new NetworkPolicy(NetworkPolicy.EGRESS,
                List.of(), List.of()), null));
        return new VmNetwork(id, saved.policy(), saved.resolver());
    }
}
