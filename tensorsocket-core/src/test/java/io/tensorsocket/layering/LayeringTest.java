package io.tensorsocket.layering;

import static com.tngtech.archunit.base.DescribedPredicate.describe;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The core's layering, checked on its compiled classes. {@code io.tensorsocket} is the API users import: public
 * types only, façades over engines that live in the implementation packages ({@code consumer}, {@code producer},
 * {@code arena}, {@code rings}, {@code protocol}, {@code stream}, ...). The API reaches each implementation
 * package only through the entry points named in {@link #ENTRY_POINTS}; the implementation packages depend on the
 * API's types (batches, options, exceptions) but never on each other in a circle; the stream model does no I/O.
 * A change that breaks a rule fails here, naming the dependency that broke it.
 */
class LayeringTest {
    private static final JavaClasses CORE = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("io.tensorsocket");

    /**
     * What the API may use of the implementation packages: the engines its façades stand on, what they are
     * assembled from, and the few helpers a public type's method is written with. Adding one is a design decision:
     * say why beside it.
     */
    private static final Set<String> ENTRY_POINTS = Set.of(
            // TensorConsumer's engines and the hooks other modules' engines come through
            "io.tensorsocket.consumer.LocalEngine",
            "io.tensorsocket.consumer.ProgressMeter",
            "io.tensorsocket.spi.ConsumerEngine",
            "io.tensorsocket.spi.ConsumerFacade",
            "io.tensorsocket.spi.StreamTerms",
            "io.tensorsocket.spi.RemoteConnector",
            // TensorConsumer.connectOrServe: start a shared producer, compare its key
            "io.tensorsocket.consumer.SharedServe",
            // TensorProducer's engine, what its builder makes, and the relay hooks it installs
            "io.tensorsocket.producer.ProducerEngine",
            "io.tensorsocket.producer.ProducerSpec",
            "io.tensorsocket.spi.RelayBoundaries",
            "io.tensorsocket.spi.RelayBoundaries$Hooks",
            "io.tensorsocket.spi.UpstreamBoundaries",
            "io.tensorsocket.spi.UpstreamBoundaries$Answer",
            // TensorProducer.queryStatus
            "io.tensorsocket.consumer.StatusQuery",
            // BatchSource.fromIterable
            "io.tensorsocket.producer.IterableSource",
            // names and directories of producers
            "io.tensorsocket.directory.ProducerDirectory",
            // the default of TensorProducer.Builder#rings
            "io.tensorsocket.rings.DescriptorRings",
            // a batch's lifetime, which Batch and Tensor enforce
            "io.tensorsocket.lease.Lease",
            "io.tensorsocket.lease.BatchLeases",
            // Tensor.copyTo copies as producers do
            "io.tensorsocket.arena.BulkCopy",
            // IndexedSource's orders
            "io.tensorsocket.stream.EpochOrders");

    @Test
    void theApiPackageHoldsPublicTypesOnly() {
        classes()
                .that()
                .resideInAPackage("io.tensorsocket")
                .and()
                .areTopLevelClasses()
                .should()
                .bePublic()
                .because("io.tensorsocket is what users import; implementation lives in the packages whose job it is")
                .check(CORE);
    }

    @Test
    void theApiReachesImplementationPackagesOnlyThroughTheirEntryPoints() {
        noClasses()
                .that()
                .resideInAPackage("io.tensorsocket")
                .should()
                .dependOnClassesThat(describe(
                        "are in an implementation package but no entry point",
                        (JavaClass c) -> c.getPackageName().startsWith("io.tensorsocket.")
                                && !c.getPackageName().equals("io.tensorsocket.source")
                                && !c.getPackageName().equals("io.tensorsocket.external")
                                && !ENTRY_POINTS.contains(c.getName())
                                && !ENTRY_POINTS.contains(c.getName().replaceAll("\\$.*", ""))))
                .check(CORE);
    }

    @Test
    void implementationPackagesFormNoCycles() {
        slices().matching("io.tensorsocket.(*)..").should().beFreeOfCycles().check(CORE);
    }

    @Test
    void theStreamModelDoesNoIo() {
        noClasses()
                .that()
                .resideInAPackage("io.tensorsocket.stream..")
                .should()
                .dependOnClassesThat()
                .resideInAnyPackage(
                        "java.io..",
                        "java.nio..",
                        "java.net..",
                        "java.lang.foreign..",
                        "io.tensorsocket.arena..",
                        "io.tensorsocket.rings..",
                        "io.tensorsocket.protocol..",
                        "io.tensorsocket.consumer..",
                        "io.tensorsocket.producer..")
                .because("the stream model is pure arithmetic over positions, shared with the Python client's port")
                .check(CORE);
    }
}
