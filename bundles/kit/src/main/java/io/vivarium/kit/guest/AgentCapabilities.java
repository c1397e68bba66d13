package io.vivarium.kit.guest;

import java.util.EnumMap;
import java.util.Map;

/**
 * What the peer can do through this client: natively, emulated by the client over stock commands
 * (with the limits {@link Feature} describes), or not at all (the call is a 501).
 */
public record AgentCapabilities(PeerInfo peer, Map<Feature, Support> features) {

    public enum Support { NATIVE, EMULATED, MISSING }

    public enum Feature {
        /** Run a command and collect its exit status and output. */
        EXEC,
        /** Working directory: emulated on stock by {@code /bin/sh -c 'cd -- "$1" && ...'}. */
        EXEC_CWD,
        /**
         * Timeout killing the command's process group: emulated on stock by polling and a second
         * {@code guest-exec} of {@code kill}; the whole group only when the guest has
         * {@code /usr/bin/setsid}, else only the command itself (its children may survive).
         */
        EXEC_TIMEOUT,
        /** Run as another uid/gid: never on stock. */
        EXEC_USER,
        /** Output streamed while the command runs (a long command's output is not held whole). */
        EXEC_STREAMED_OUTPUT,
        FILE_READ,
        /** Atomic write: emulated on stock by a temp file and {@code mv -f} (no fsync). */
        FILE_WRITE_ATOMIC,
        FSFREEZE,
        TIME,
        SHUTDOWN,
        /** The warm interpreter ({@code vivarium-eval}). */
        EVAL,
        /** A fingerprinted listing of files walked by the agent ({@code vivarium-list}), no process per file. */
        LIST
    }

    public AgentCapabilities {
        features = Map.copyOf(features);
    }

    public Support support(Feature feature) {
        return features.getOrDefault(feature, Support.MISSING);
    }

    static AgentCapabilities of(PeerInfo peer) {
        Map<Feature, Support> map = new EnumMap<>(Feature.class);
        boolean ourExec = peer.supports(Commands.EXEC) && peer.supports(Commands.EXEC_POLL);
        boolean stockExec = peer.supports("guest-exec") && peer.supports("guest-exec-status");
        Support exec = ourExec ? Support.NATIVE : stockExec ? Support.EMULATED : Support.MISSING;
        map.put(Feature.EXEC, ourExec || stockExec ? Support.NATIVE : Support.MISSING);
        map.put(Feature.EXEC_CWD, exec);
        map.put(Feature.EXEC_TIMEOUT, exec);
        map.put(Feature.EXEC_USER, ourExec ? Support.NATIVE : Support.MISSING);
        map.put(Feature.EXEC_STREAMED_OUTPUT, ourExec ? Support.NATIVE : Support.MISSING);
        boolean stockFiles = peer.supports("guest-file-open") && peer.supports("guest-file-read")
                && peer.supports("guest-file-write") && peer.supports("guest-file-close");
        map.put(Feature.FILE_READ, peer.supports(Commands.FILE_READ) ? Support.NATIVE
                : stockFiles ? Support.EMULATED : Support.MISSING);
        map.put(Feature.FILE_WRITE_ATOMIC, peer.supports(Commands.FILE_WRITE) ? Support.NATIVE
                : stockFiles && stockExec ? Support.EMULATED : Support.MISSING);
        map.put(Feature.FSFREEZE, peer.supports("guest-fsfreeze-freeze-list") && peer.supports("guest-fsfreeze-thaw")
                ? Support.NATIVE : Support.MISSING);
        map.put(Feature.TIME, peer.supports("guest-get-time") ? Support.NATIVE : Support.MISSING);
        map.put(Feature.SHUTDOWN, peer.supports("guest-shutdown") ? Support.NATIVE : Support.MISSING);
        map.put(Feature.EVAL, peer.supports(Commands.EVAL) ? Support.NATIVE : Support.MISSING);
        map.put(Feature.LIST, peer.supports(Commands.LIST) ? Support.NATIVE : Support.MISSING);
        return new AgentCapabilities(peer, map);
    }
}
