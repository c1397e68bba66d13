package io.vivarium.plugins.internal;

import java.io.IOException;
import java.lang.System.Logger.Level;
import java.util.Arrays;
import java.util.Hashtable;
import java.util.Map;
import java.util.Optional;

import io.vivarium.api.ApiException;
import io.vivarium.common.features.Feature;

import org.osgi.framework.BundleContext;
import org.osgi.service.cm.Configuration;
import org.osgi.service.cm.ConfigurationAdmin;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Reference;

/**
 * Applies the {@code configurations} of feature files through Configuration Admin, so that a
 * backend's settings (binary paths, limits, image folders) live in its feature: those of the
 * features the launcher started (framework property {@code vivarium.features}) as soon as this
 * component activates, and a feature's own when it is enabled at run time, before its bundles start.
 *
 * <p>Immediate, and needing nothing but Configuration Admin: it activates while its bundle starts,
 * which is before the bundles of the backend features (the launcher installs them after core's and
 * a start level starts bundles in install order), so a backend's component sees its configuration
 * at its first activation. A feature's configuration is a default: a PID that already has one (a
 * {@code .cfg} in the deploy folder, an earlier change) keeps it.
 */
@Component(service = FeatureConfigurations.class, immediate = true)
public class FeatureConfigurations {
    private static final System.Logger LOG = System.getLogger(FeatureConfigurations.class.getName());

    private final ConfigurationAdmin configAdmin;

    @Activate
    public FeatureConfigurations(BundleContext context, @Reference ConfigurationAdmin configAdmin) {
        this.configAdmin = configAdmin;
        String started = context.getProperty("vivarium.features");
        FeatureCatalog catalog = FeatureCatalog.of(context);
        if (started != null) {
            Arrays.stream(started.split(",")).map(String::trim).filter(n -> !n.isEmpty())
                    .map(catalog::find).flatMap(Optional::stream).forEach(this::apply);
        }
    }

    /** Gives each PID of the feature its configuration unless it has one. */
    void apply(Feature feature) {
        for (Map.Entry<String, Map<String, Object>> e : feature.configurations().entrySet()) {
            try {
                Configuration c = configAdmin.getConfiguration(e.getKey(), "?");
                if (c.getProperties() == null) {
                    c.update(new Hashtable<>(e.getValue()));
                    LOG.log(Level.INFO, "feature " + feature.name() + " configured " + e.getKey() + " " + e.getValue().keySet());
                }
            } catch (IOException ex) {
                throw ApiException.internal("cannot apply the configuration " + e.getKey() + " of the feature "
                        + feature.name() + ": " + ex.getMessage(), ex);
            }
        }
    }
}
