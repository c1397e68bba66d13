package io.vivarium.cli.internal;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import io.vivarium.api.ApiException;
import io.vivarium.api.BackendInfo;
import io.vivarium.api.Caller;
import io.vivarium.api.FeatureInfo;
import io.vivarium.api.PluginInfo;
import io.vivarium.api.PluginService;
import io.vivarium.api.Role;
import io.vivarium.api.SandboxInfo;
import io.vivarium.api.SandboxService;

import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/**
 * Operator commands for the Gogo console ({@code vivarium:plugins}, {@code vivarium:features},
 * {@code vivarium:backends}, {@code vivarium:sandboxes}): the same operations as the operator's HTTP
 * routes, for someone at the daemon's console, who is the daemon's operator. Errors come back as
 * their message, as a shell user would want them.
 */
@Component(service = ConsoleCommands.class, property = {
        "osgi.command.scope=vivarium",
        "osgi.command.function=plugins",
        "osgi.command.function=features",
        "osgi.command.function=backends",
        "osgi.command.function=sandboxes" })
public class ConsoleCommands {
    static final String PLUGINS_USAGE = "usage: plugins [list] | plugins install JAR | plugins update NAME JAR | plugins remove NAME";
    static final String FEATURES_USAGE = "usage: features [list] | features enable NAME | features disable NAME";

    private final PluginService plugins;
    private final SandboxService sandboxes;

    @Activate
    public ConsoleCommands(@Reference PluginService plugins, @Reference SandboxService sandboxes) {
        this.plugins = plugins;
        this.sandboxes = sandboxes;
    }

    public String plugins() {
        Table t = new Table("ID", "STATE", "BUNDLE", "VERSION", "FEATURE", "PROVIDES");
        for (PluginInfo p : plugins.plugins()) {
            t.row(p.id(), p.state(), p.symbolicName(), p.version(), p.feature(), String.join(",", p.provides()));
        }
        return t.toString();
    }

    public String plugins(String action) {
        return "list".equals(action) ? plugins() : PLUGINS_USAGE;
    }

    public String plugins(String action, String arg) {
        return attempt(() -> switch (action) {
            case "install" -> describe("installed", plugins.install(read(arg)));
            case "remove" -> {
                plugins.uninstall(arg);
                yield "removed " + arg;
            }
            default -> PLUGINS_USAGE;
        });
    }

    public String plugins(String action, String name, String jar) {
        return attempt(() -> "update".equals(action) ? describe("updated", plugins.update(name, read(jar))) : PLUGINS_USAGE);
    }

    public String features() {
        Table t = new Table("FEATURE", "ENABLED", "DESCRIPTION");
        for (FeatureInfo f : plugins.features()) {
            t.row(f.name(), f.enabled() ? "yes" : "no", f.description());
        }
        return t.toString();
    }

    public String features(String action) {
        return "list".equals(action) ? features() : FEATURES_USAGE;
    }

    public String features(String action, String name) {
        return attempt(() -> switch (action) {
            case "enable" -> "enabled " + plugins.enable(name).name();
            case "disable" -> "disabled " + plugins.disable(name).name();
            default -> FEATURES_USAGE;
        });
    }

    public String backends() {
        Table t = new Table("BACKEND", "AVAILABLE", "MACHINE", "VERSION", "SANDBOXES", "CAPABILITIES", "REASON");
        for (BackendInfo b : sandboxes.backends()) {
            t.row(b.name(), b.available() ? "yes" : "no", b.machine() ? "yes" : "no", b.version(), b.sandboxes(),
                    b.capabilities().isEmpty() ? null : String.join(",", b.capabilities()), b.reason());
        }
        return t.toString();
    }

    /** The sandboxes of a tenant ({@code default} when none is named). */
    public String sandboxes() {
        return sandboxes("default");
    }

    public String sandboxes(String tenant) {
        Table t = new Table("ID", "BACKEND", "STATUS", "PID", "CREATED", "REASON");
        for (SandboxInfo s : sandboxes.list(new Caller(tenant, Role.OPERATOR))) {
            t.row(s.id(), s.backend(), s.status(), s.pid(), s.createdAtUnix(), s.reason());
        }
        return t.toString();
    }

    private static String describe(String what, PluginInfo p) {
        return what + " " + p.symbolicName() + " " + p.version() + " (bundle " + p.id() + ", " + p.state() + ")";
    }

    private static byte[] read(String file) {
        try {
            return Files.readAllBytes(Path.of(file));
        } catch (IOException e) {
            throw ApiException.badRequest("cannot read " + file + ": " + e.getMessage());
        }
    }

    private static String attempt(java.util.function.Supplier<String> action) {
        try {
            return action.get();
        } catch (ApiException e) {
            return "error (" + e.status() + "): " + e.getMessage();
        }
    }
}
