package io.vivarium.core.internal;

import java.util.List;

import io.vivarium.api.ApiException;
import io.vivarium.api.Caller;
import io.vivarium.api.CreateSandboxRequest;
import io.vivarium.api.Role;
import io.vivarium.api.SandboxInfo;

/**
 * The templates' setup snapshots ({@link TemplateSetups}): each is the snapshot tagged with its
 * template's name in the daemon's own tenant {@value #TENANT}, which no token can name (a tenant of
 * the token file never starts with {@code _}), so no client lists, forks or deletes it; its children
 * belong to the tenants that create from the template.
 */
final class SetupSnapshots implements TemplateSetups {

    static final String TENANT = "_templates";
    private static final Caller OWNER = new Caller(TENANT, Role.OPERATOR);

    private final Snapshots snapshots;
    private final Captures captures;
    private final Forks forks;

    SetupSnapshots(Snapshots snapshots, Captures captures, Forks forks) {
        this.snapshots = snapshots;
        this.captures = captures;
        this.forks = forks;
    }

    @Override
    public void build(String template, CreateSandboxRequest create, TemplateRoot root, List<String> setup) {
        remove(template);
        captures.buildOnTemplate(OWNER, template, create, root, setup);
    }

    @Override
    public SandboxInfo create(Caller caller, String template, CreateSandboxRequest child) {
        return forks.forkOfTemplate(caller, snapshots.lookup(TENANT, template).orElseThrow(() -> ApiException.conflict(
                "template " + template + "'s setup snapshot is gone; the operator makes the template again (DELETE, then "
                        + "POST /v1/templates)")), child);
    }

    @Override
    public void remove(String template) {
        if (snapshots.lookup(TENANT, template).isPresent()) {
            snapshots.delete(OWNER, template, false, true);
        }
    }
}
