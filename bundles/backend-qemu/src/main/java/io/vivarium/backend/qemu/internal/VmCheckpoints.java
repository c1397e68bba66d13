package io.vivarium.backend.qemu.internal;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;

import io.vivarium.api.ApiException;
import io.vivarium.api.CheckpointInfo;
import io.vivarium.api.spi.OperationContext;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * A VM's checkpoints as internal snapshots of its qcow2 ({@code savevm}/{@code loadvm}/
 * {@code delvm} through QMP's human monitor): RAM, devices and disk under one tag in
 * {@code disk.qcow2}, restored in place into the running QEMU. QEMU writes the RAM state first and
 * the snapshot table last, in its main loop, so a tag is listed only once it is complete, and a
 * daemon killed meanwhile does not stop QEMU finishing it. Why this and not a RAM file per
 * checkpoint: docs/qemu.md ("Checkpoints").
 */
final class VmCheckpoints {

    static final String MODE = "qcow2-internal";
    /** How long listing or deleting may take; saving and loading get the caller's deadline. */
    private static final Duration MONITOR_TIMEOUT = Duration.ofSeconds(30);

    private final String id;
    private final Supplier<QmpClient> monitor;

    VmCheckpoints(String id, Supplier<QmpClient> monitor) {
        this.id = id;
        this.monitor = monitor;
    }

    CheckpointInfo create(String tag, OperationContext context) {
        if (find(tag).isPresent()) {
            throw ApiException.conflict("sandbox " + id + " already has a checkpoint " + tag + "; choose another tag");
        }
        context.checkpoint("saving the VM's state");
        try {
            human("savevm " + tag, context.remaining());
        } catch (IOException e) {
            throw ApiException.internal("cannot checkpoint sandbox " + id + " as " + tag + ": " + e.getMessage(), e);
        }
        return find(tag).orElseThrow(() -> ApiException.internal("QEMU saved checkpoint " + tag + " of sandbox " + id
                + " but does not list it", null));
    }

    /** Loads {@code tag} into the running QEMU and lets the guest run on from there, a powered-off one too. */
    void restore(String tag, OperationContext context) {
        if (find(tag).isEmpty()) {
            throw ApiException.notFound("sandbox " + id + " has no checkpoint " + tag);
        }
        try {
            if (RunState.SHUT_DOWN.equals(RunState.of(qmp()))) {
                RunState.resetOutOfShutdown(qmp(), context, () -> load(tag, context));
            } else {
                load(tag, context);
            }
        } catch (IOException e) {
            throw ApiException.internal("restoring sandbox " + id + " to " + tag + " failed, so the VM may be in its "
                    + "state from before or from the checkpoint: " + e.getMessage(), e);
        }
    }

    private void load(String tag, OperationContext context) throws IOException {
        context.checkpoint("loading the VM's state");
        human("loadvm " + tag, context.remaining());
        RunState.cont(qmp());
    }

    boolean delete(String tag) {
        if (find(tag).isEmpty()) {
            return false;
        }
        try {
            human("delvm " + tag, MONITOR_TIMEOUT);
        } catch (IOException e) {
            throw ApiException.internal("cannot delete checkpoint " + tag + " of sandbox " + id + ": " + e.getMessage(), e);
        }
        return true;
    }

    /** The snapshots of the disk node, oldest first. */
    List<CheckpointInfo> list() {
        JsonNode nodes;
        try {
            nodes = qmp().execute("query-named-block-nodes", null, MONITOR_TIMEOUT);
        } catch (IOException e) {
            throw ApiException.internal("cannot list the checkpoints of sandbox " + id + ": " + e.getMessage(), e);
        }
        List<JsonNode> snapshots = new ArrayList<>();
        for (JsonNode node : nodes) {
            if (QemuCommand.DISK_NODE.equals(node.path("node-name").asText())) {
                node.path("image").path("snapshots").forEach(snapshots::add);
            }
        }
        return snapshots.stream()
                .sorted(Comparator.comparingLong((JsonNode s) -> s.path("date-sec").asLong())
                        .thenComparingLong(s -> s.path("date-nsec").asLong()))
                .map(s -> new CheckpointInfo(s.path("name").asText(), s.path("date-sec").asLong(),
                        s.path("vm-state-size").asLong(), MODE))
                .toList();
    }

    private Optional<CheckpointInfo> find(String tag) {
        return list().stream().filter(c -> c.tag().equals(tag)).findFirst();
    }

    /**
     * An HMP command (tags reach here checked by core: plain names, nothing a monitor line could
     * split on). HMP reports a failure as printed text, so any output is the error.
     */
    private void human(String line, Duration timeout) throws IOException {
        JsonNode out = qmp().execute("human-monitor-command",
                JsonNodeFactory.instance.objectNode().put("command-line", line), timeout);
        String printed = out.asText().strip();
        if (!printed.isEmpty()) {
            throw new IOException(line + ": " + printed);
        }
    }

    private QmpClient qmp() throws IOException {
        QmpClient q = monitor.get();
        if (q == null || !q.isOpen()) {
            throw new IOException("the monitor connection of sandbox " + id + " is closed");
        }
        return q;
    }
}
