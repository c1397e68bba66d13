package io.vivarium.core.internal;

import java.util.List;

import io.vivarium.api.Caller;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.SandboxInfo;

/**
 * What a template's {@code setup} runs on (docs/templates.md, "Setup"): run once at the template's
 * build in a sandbox of it, then captured as a snapshot that every sandbox of the template is forked
 * from. Snapshots are another component's ({@link SnapshotManager}), which hands core this while it
 * runs ({@link Templates#setups}).
 */
interface TemplateSetups {

    /**
     * Makes {@code template}'s setup snapshot: a sandbox of {@code create} on {@code root} runs
     * {@code setup} as the template's user, and is captured; one left by an earlier build goes first.
     */
    void build(String template, CreateSandboxRequest create, TemplateRoot root, List<String> setup);

    /** A sandbox of {@code template} for {@code caller}: a child of its setup snapshot, made as {@code child} says. */
    SandboxInfo create(Caller caller, String template, CreateSandboxRequest child);

    /** Removes {@code template}'s setup snapshot, if it has one. */
    void remove(String template);
}
