package io.vivarium.kit.vmm;

import io.vivarium.api.spi.Availability;
import io.vivarium.api.spi.SandboxBackend;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Whether a VMM's guests can run on this host and how: a KVM that runs guests (decided once per
 * revision: the CPU does not change), the VMM's executable, the agent binary that starts it, the
 * default guest image; and the details {@code GET /v1/backends} shows.
 */
public final class VmmHostProbe {

    private static final long VERSION_SECONDS = 5;

    private final VmmSettings settings;
    private final String vmm;
    private final HostKvm kvm;
    private final String installHint;
    private final String agentProblem;
    private FileTime versionOf;
    private Optional<String> version = Optional.empty();

    /**
     * @param vmm the VMM's name, for messages
     * @param installHint how to get the executable, after "is missing", e.g. where releases are and which key names it
     * @param agentProblem why the agent binary that starts each VMM could not be written, or null
     */
    public VmmHostProbe(VmmSettings settings, String vmm, HostKvm kvm, String installHint, String agentProblem) {
        this.settings = settings;
        this.vmm = vmm;
        this.kvm = kvm;
        this.installHint = installHint;
        this.agentProblem = agentProblem;
    }

    /**
     * The first line {@code BINARY --version} prints, asked again only when the executable changed
     * (its modification time): a listing must stay cheap. Empty without an executable, or when it
     * says nothing within {@value #VERSION_SECONDS} s.
     */
    private synchronized Optional<String> version() {
        FileTime modified;
        try {
            modified = Files.getLastModifiedTime(settings.binary());
        } catch (IOException e) {
            return Optional.empty();
        }
        if (!modified.equals(versionOf)) {
            versionOf = modified;
            version = askVersion();
        }
        return version;
    }

    private Optional<String> askVersion() {
        try {
            Process p = new ProcessBuilder(settings.binary().toString(), "--version").redirectErrorStream(true).start();
            if (!p.waitFor(VERSION_SECONDS, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return Optional.empty();
            }
            return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).lines().map(String::strip)
                    .filter(l -> !l.isEmpty()).findFirst();
        } catch (IOException e) {
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        }
    }

    /**
     * Every missing piece, in the order an operator would add them: KVM, the executable, the
     * image. The executable and the image are looked at on every call, so installing them makes the
     * backend available.
     */
    public Availability availability() {
        List<String> missing = new ArrayList<>();
        if (!kvm.runsGuests()) {
            missing.add(vmm + " needs a KVM that runs guests, and this host has none: " + kvm.reason());
        }
        if (!Files.isExecutable(settings.binary())) {
            missing.add(settings.binary() + " is missing " + installHint);
        }
        if (agentProblem != null) {
            missing.add(agentProblem);
        }
        try {
            VmmGuestImage.load(settings.imageDir(), settings.defaultImage());
        } catch (IOException e) {
            missing.add(e.getMessage());
        }
        return missing.isEmpty() ? Availability.yes() : Availability.no(String.join("; ", missing));
    }

    /**
     * The accelerator, the platform, the isolation, the agent, the executable and what it says its
     * version is, the images; then {@code own}.
     */
    public Map<String, String> details(Map<String, String> own) {
        Map<String, String> d = new LinkedHashMap<>();
        d.put(SandboxBackend.DETAIL_ACCELERATOR, kvm.runsGuests() ? "kvm (" + kvm.reason() + ")" : "none (" + kvm.reason() + ")");
        d.put(SandboxBackend.DETAIL_PLATFORM, vmm);
        d.put(SandboxBackend.DETAIL_ISOLATION, "a " + vmm + " virtual machine per sandbox, without a network");
        d.put(SandboxBackend.DETAIL_AGENT, "the image's vivarium-agent on vsock port " + VmmLauncher.AGENT_PORT
                + ", through the VMM's vsock socket");
        d.put("executable", settings.binary().toString());
        version().ifPresent(v -> d.put("version", v));
        d.put("images", settings.imageDir().toString());
        d.putAll(own);
        return d;
    }
}
