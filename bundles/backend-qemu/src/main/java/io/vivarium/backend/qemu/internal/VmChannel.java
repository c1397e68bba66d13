package io.vivarium.backend.qemu.internal;

import io.vivarium.api.ExecRequest;
import io.vivarium.kit.guest.ClientGuestChannel;
import io.vivarium.kit.guest.ExecSpec;
import io.vivarium.kit.guest.GuestAgentClient;

import java.time.Duration;
import java.time.Instant;
import java.util.function.BooleanSupplier;

/**
 * The way into a VM: its guest agent on the virtio-serial port, through the kit's stream
 * transport (one long-lived stream per VM, reopened after a drop). With our agent the
 * {@code vivarium-*} extensions carry exec and files; with a stock qemu-ga the client emulates what
 * it can over the stock commands and refuses the rest with a 501 that says so. Every call is
 * bounded: an agent that does not answer is a 502, a VM that is not running a 503. Unlike a
 * container, a VM keeps its own clock, which a restore must set.
 */
final class VmChannel extends ClientGuestChannel {

    /** Past the command's own timeout, how long the agent has to report it. */
    private static final Duration EXEC_ANSWER_GRACE = Duration.ofSeconds(5);

    /** The template image's root the VM runs on, whose user runs a client's commands; null: root does. */
    private final VmRoot root;

    VmChannel(String sandboxId, GuestAgentClient agent, BooleanSupplier running, VmRoot root) {
        super(sandboxId, agent, running, EXEC_ANSWER_GRACE);
        this.root = root;
    }

    @Override
    protected ExecSpec commandOf(ExecRequest request) {
        ExecSpec command = super.commandOf(request);
        return root == null ? command : command.withUser(root.uid(), root.gid());
    }

    /** {@code guest-set-time}, which our agent and qemu-ga both have. */
    @Override
    public void setTime(Instant now) {
        long nanos = Math.addExact(Math.multiplyExact(now.getEpochSecond(), 1_000_000_000L), now.getNano());
        call(PING_TIMEOUT, (client, deadline) -> {
            client.setTime(nanos, deadline);
            return null;
        });
    }
}
