// Command controller is an example Kubernetes controller (controller-runtime) that embeds the
// evaluator through scale-units.dev/go: for each Deployment that carries a contract, it reads
// the observations from a ConfigMap, asks the component for a decision, checks the decision
// with the gate (SPEC §12: is this change permitted?) and only then patches the Deployment's replicas.
//
// A Deployment opts in with two annotations:
//
//	scale-units.dev/contract:      the contract, JSON (SPEC §4)
//	scale-units.dev/observations:  the name of a ConfigMap in its namespace whose key
//	                               observations.json holds {"signal", "capacities", "quotas",
//	                               "continuity", "safety"} as in a request (SPEC §6)
//
// The controller writes scale-units.dev/last-action-at and scale-units.dev/decision-id when it
// patches, so that the next decision sees its cooldown. Run it with a kubeconfig
// (KUBECONFIG or in-cluster); SCALE_UNITS_CACHE_DIR keeps the compiled component between runs.
package main

import (
	"context"
	"errors"
	"os"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	scaleunits "scale-units.dev/go"
)

const (
	annotationContract     = "scale-units.dev/contract"
	annotationObservations = "scale-units.dev/observations"
	annotationLastAction   = "scale-units.dev/last-action-at"
	annotationDecisionID   = "scale-units.dev/decision-id"
	observationsKey        = "observations.json"
	// How long one decision may take before the call is stopped (the instance is discarded).
	decisionDeadline = 2 * time.Second
	// How often a Deployment is looked at again when nothing changed.
	resync = 30 * time.Second
)

// Reconciler decides the replicas of opted-in Deployments.
type Reconciler struct {
	client.Client
	Evaluator *scaleunits.Evaluator
	Now       func() time.Time
}

// Reconcile evaluates one Deployment and patches its replicas when the decision and the gate
// agree. A refused request or a refused decision changes nothing.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)
	var dep appsv1.Deployment
	if err := r.Get(ctx, req.NamespacedName, &dep); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	contract, ok := dep.Annotations[annotationContract]
	if !ok {
		return ctrl.Result{}, nil
	}
	var observations []byte
	if name := dep.Annotations[annotationObservations]; name != "" {
		var cm corev1.ConfigMap
		if err := r.Get(ctx, types.NamespacedName{Namespace: dep.Namespace, Name: name}, &cm); err != nil {
			return ctrl.Result{}, client.IgnoreNotFound(err)
		}
		observations = []byte(cm.Data[observationsKey])
	}
	current := int32(1)
	if dep.Spec.Replicas != nil {
		current = *dep.Spec.Replicas
	}
	plan, err := Plan(ctx, r.Evaluator, []byte(contract), observations, current, dep.Annotations[annotationLastAction], r.Now())
	var refused *scaleunits.Error
	switch {
	case errors.As(err, &refused):
		logger.Info("the evaluator refused the request", "code", refused.Code, "path", refused.Path, "message", refused.Message)
		return ctrl.Result{RequeueAfter: resync}, nil
	case err != nil:
		return ctrl.Result{}, err
	}
	if plan.Replicas == nil {
		logger.Info("no change", "action", plan.Decision.Action, "reasons", plan.Decision.Reasons, "why", plan.Why)
		return ctrl.Result{RequeueAfter: resync}, nil
	}
	patch := client.MergeFrom(dep.DeepCopy())
	dep.Spec.Replicas = plan.Replicas
	if dep.Annotations == nil {
		dep.Annotations = map[string]string{}
	}
	dep.Annotations[annotationLastAction] = r.Now().UTC().Format(time.RFC3339)
	dep.Annotations[annotationDecisionID] = plan.Decision.DecisionID
	if err := r.Patch(ctx, &dep, patch); err != nil {
		return ctrl.Result{}, err
	}
	logger.Info("patched replicas", "from", current, "to", *plan.Replicas, "decision", plan.Decision.DecisionID, "policy", r.Evaluator.Digest())
	return ctrl.Result{RequeueAfter: resync}, nil
}

func main() {
	ctrl.SetLogger(zap.New())
	ctx := ctrl.SetupSignalHandler()
	var opts []scaleunits.Option
	if dir := os.Getenv("SCALE_UNITS_CACHE_DIR"); dir != "" {
		opts = append(opts, scaleunits.WithCacheDir(dir))
	}
	ev, err := scaleunits.NewBundled(ctx, opts...)
	if err != nil {
		ctrl.Log.Error(err, "loading the evaluator")
		os.Exit(1)
	}
	defer ev.Close(context.Background())
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{})
	if err != nil {
		ctrl.Log.Error(err, "creating the manager")
		os.Exit(1)
	}
	r := &Reconciler{Client: mgr.GetClient(), Evaluator: ev, Now: time.Now}
	if err := ctrl.NewControllerManagedBy(mgr).For(&appsv1.Deployment{}).Complete(r); err != nil {
		ctrl.Log.Error(err, "creating the controller")
		os.Exit(1)
	}
	ctrl.Log.Info("scale-units controller", "component", ev.Digest(), "evaluator", ev.Info().EvaluatorVersion)
	if err := mgr.Start(ctx); err != nil {
		ctrl.Log.Error(err, "running the manager")
		os.Exit(1)
	}
}
