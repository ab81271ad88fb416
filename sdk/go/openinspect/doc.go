// Stands up a complete Open-Inspect (background-agents) installation on Cloudflare, Modal or Daytona, and Kubernetes.
package openinspect
