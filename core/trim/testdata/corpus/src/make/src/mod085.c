#include <stdio.h>

int mod085(int x)
{
    return x + 85;
}
