#include <stdio.h>

int mod133(int x)
{
    return x + 133;
}
