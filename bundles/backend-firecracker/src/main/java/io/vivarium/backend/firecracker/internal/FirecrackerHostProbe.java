package io.vivarium.backend.firecracker.internal;

import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.SandboxBackend;
import io.vivarium.kit.vmm.HostKvm;
import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Whether Firecracker microVMs can run on this host, and how: the executable, a KVM that runs
 * guests (decided once per revision: the CPU does not change), the default guest image; and the
 * details {@code GET /v1/backends} shows, with the version of Firecracker's API document this
 * backend is written and contract-tested against.
 */
final class FirecrackerHostProbe {

    private final FirecrackerSettings settings;
    private final HostKvm kvm;
    private final String agentProblem;

    /** @param agentProblem why the kit's agent binary (which starts the VMM) could not be written, or null */
    FirecrackerHostProbe(FirecrackerSettings settings, HostKvm kvm, String agentProblem) {
        this.settings = settings;
        this.kvm = kvm;
        this.agentProblem = agentProblem;
    }

    /**
     * Every missing piece, in the order an operator would add them: KVM, the executable, the image.
     * The executable and the image are looked at on every call, so installing them makes the
     * backend available.
     */
    Availability availability() {
        List<String> missing = new ArrayList<>();
        if (!kvm.runsGuests()) {
            missing.add("Firecracker needs a KVM that runs guests, and this host has none: " + kvm.reason());
        }
        if (!Files.isExecutable(settings.firecracker())) {
            missing.add(settings.firecracker() + " is missing (Firecracker is in no Debian release): install a release "
                    + "binary from https://github.com/firecracker-microvm/firecracker/releases there, or set "
                    + "firecracker_path (PID " + FirecrackerConfig.PID + ")");
        }
        if (agentProblem != null) {
            missing.add(agentProblem);
        }
        try {
            FirecrackerImage.load(settings.imageDir(), settings.defaultImage());
        } catch (IOException e) {
            missing.add(e.getMessage());
        }
        return missing.isEmpty() ? Availability.yes() : Availability.no(String.join("; ", missing));
    }

    Map<String, String> details() {
        Map<String, String> d = new LinkedHashMap<>();
        d.put(SandboxBackend.DETAIL_ACCELERATOR, kvm.runsGuests() ? "kvm (" + kvm.reason() + ")" : "none (" + kvm.reason() + ")");
        d.put(SandboxBackend.DETAIL_PLATFORM, "Firecracker microVM");
        d.put(SandboxBackend.DETAIL_ISOLATION, "a Firecracker microVM per sandbox, without a network");
        d.put(SandboxBackend.DETAIL_AGENT, "the image's vivarium-agent on vsock port " + FirecrackerLauncher.AGENT_PORT
                + ", through the VMM's vsock socket");
        d.put("api", "Firecracker API " + FirecrackerApi.TARGET + " (the document this backend is written and "
                + "contract-tested against)");
        d.put("firecracker", settings.firecracker().toString());
        d.put("images", settings.imageDir().toString());
        return d;
    }
}
