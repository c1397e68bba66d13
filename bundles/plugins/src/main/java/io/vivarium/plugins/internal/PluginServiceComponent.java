package io.vivarium.plugins.internal;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import io.vivarium.api.FeatureInfo;
import io.vivarium.api.PluginInfo;
import io.vivarium.api.PluginService;
import io.vivarium.api.spi.RuntimeObserver;
import io.vivarium.common.features.EnabledFeatures;

import org.apache.felix.fileinstall.ArtifactInstaller;
import org.osgi.framework.BundleContext;
import org.osgi.framework.Constants;
import org.osgi.framework.ServiceRegistration;
import org.osgi.service.component.annotations.Activate;
import org.osgi.service.component.annotations.Component;
import org.osgi.service.component.annotations.Deactivate;
import org.osgi.service.component.annotations.Reference;
import org.osgi.service.component.annotations.ReferenceCardinality;
import org.osgi.service.component.annotations.ReferencePolicy;
import org.osgi.service.component.annotations.ReferencePolicyOption;

/**
 * The {@link PluginService}: {@link BundleAdmin} and {@link FeatureAdmin} on the folders the launcher
 * passes as framework properties ({@code vivarium.state.dir}, {@code vivarium.features.dir},
 * {@code vivarium.system.dir}) and the features it started ({@code vivarium.features}); and the
 * deploy folder's installer of feature bundles ({@link FeatureBundleDeployer}) on the same
 * {@link BundleAdmin}. All of them change the framework through one {@link BundleChanges}, so that
 * their changes are serialised.
 */
@Component(service = PluginService.class)
public class PluginServiceComponent implements PluginService {

    private final BundleChanges changes;
    private final BundleAdmin bundles;
    private final FeatureAdmin features;
    private final ServiceRegistration<ArtifactInstaller> deployer;

    @Activate
    public PluginServiceComponent(BundleContext context, @Reference FeatureConfigurations configurations) {
        Path state = Path.of(orDefault(context.getProperty("vivarium.state.dir"), "var"));
        PluginStore store = new PluginStore(state.resolve("plugins"));
        changes = new BundleChanges(context.getBundle(Constants.SYSTEM_BUNDLE_ID).getBundleContext());
        features = new FeatureAdmin(changes, FeatureCatalog.of(context), configurations,
                new EnabledFeatures(state, names(context.getProperty("vivarium.features"))), store);
        bundles = new BundleAdmin(changes, features, store);
        deployer = context.registerService(ArtifactInstaller.class, new FeatureBundleDeployer(bundles), null);
        // Not on the activating thread: that is the framework's start-level thread, which also runs
        // the refreshes a restore waits for.
        Thread restore = new Thread(bundles::restore, "vivarium-plugins-restore");
        restore.setDaemon(true);
        restore.start();
    }

    @Reference(cardinality = ReferenceCardinality.OPTIONAL, policy = ReferencePolicy.DYNAMIC,
            policyOption = ReferencePolicyOption.GREEDY)
    void bindObserver(RuntimeObserver o) {
        changes.observer(o);
    }

    void unbindObserver(RuntimeObserver o) {
        if (changes.observer() == o) {
            changes.observer(RuntimeObserver.NONE);
        }
    }

    @Deactivate
    void deactivate() {
        deployer.unregister();
        bundles.close();
    }

    @Override
    public List<PluginInfo> plugins() {
        return bundles.plugins();
    }

    @Override
    public PluginInfo install(byte[] jar) {
        return bundles.install(jar);
    }

    @Override
    public PluginInfo update(String symbolicName, byte[] jar) {
        return bundles.update(symbolicName, jar);
    }

    @Override
    public void uninstall(String symbolicName) {
        bundles.uninstall(symbolicName);
    }

    @Override
    public List<FeatureInfo> features() {
        return features.features();
    }

    @Override
    public FeatureInfo enable(String feature) {
        return features.enable(feature);
    }

    @Override
    public FeatureInfo disable(String feature) {
        return features.disable(feature);
    }

    private static String orDefault(String value, String fallback) {
        return value == null || value.isBlank() ? fallback : value;
    }

    private static List<String> names(String commaList) {
        return commaList == null ? List.of()
                : Arrays.stream(commaList.split(",")).map(String::trim).filter(s -> !s.isEmpty()).toList();
    }
}
